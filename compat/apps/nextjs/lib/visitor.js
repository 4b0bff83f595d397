// Reads the request from Next's request store (AsyncLocalStorage), in code
// that is handed no request, after awaits across a timer and a microtask.
import { cookies, headers } from "next/headers";

export async function visitor() {
  await new Promise((resolve) => setTimeout(resolve, 1));
  const h = await headers();
  await Promise.resolve();
  const c = await cookies();
  return {
    who: h.get("x-who") ?? "anonymous",
    lang: h.get("accept-language") ?? "none",
    theme: c.get("theme")?.value ?? "light",
  };
}
