// SSR with the query string; dynamic, so every request is rendered.
export const dynamic = "force-dynamic";

export default async function Home({ searchParams }) {
  const { name = "world" } = await searchParams;
  const items = ["alpha", "beta", "gamma"];
  return (
    <main>
      <h1>Hello, {name}!</h1>
      <ul>
        {items.map((item) => (
          <li key={item}>{item}</li>
        ))}
      </ul>
    </main>
  );
}
