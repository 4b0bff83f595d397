import { Link, useLoaderData } from "react-router";
export function meta() { return [{ title: "Home" }, { name: "description", content: "SSR on Workers" }]; }
export async function loader({ request }: { request: Request }) {
  const url = new URL(request.url);
  return { greeting: `Hello, ${url.searchParams.get("name") ?? "world"}`, items: ["a", "b", "<c>"] };
}
export default function Home() {
  const { greeting, items } = useLoaderData<typeof loader>();
  return <main><h1>{greeting}</h1><ul>{items.map((i) => <li key={i}>{i}</li>)}</ul><Link to="/users/7">user 7</Link></main>;
}
