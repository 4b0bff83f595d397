import { visitor } from "../../lib/visitor.js";

export const dynamic = "force-dynamic";

export default async function WhoAmI() {
  const [first, second] = await Promise.all([visitor(), visitor()]);
  return (
    <main>
      <p id="who">{first.who}</p>
      <p id="lang">{second.lang}</p>
      <p id="theme">{first.theme}</p>
    </main>
  );
}
