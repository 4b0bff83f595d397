// Next.js 16's proxy (formerly middleware): a redirect, and a request
// header the pages read through next/headers.
import { NextResponse } from "next/server";

export function proxy(request) {
  if (request.nextUrl.pathname === "/old-home") {
    return NextResponse.redirect(new URL("/?name=redirected", request.url), 308);
  }
  const headers = new Headers(request.headers);
  headers.set("x-proxied", "yes");
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("x-proxy", "isolane-compat");
  return response;
}

export const config = { matcher: ["/((?!_next/).*)"] };
