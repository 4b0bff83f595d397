import { notFound } from "next/navigation";

export const dynamic = "force-dynamic";

const users = { 1: "Ada Lovelace", 7: "Grace Hopper" };

export async function generateMetadata({ params }) {
  const { id } = await params;
  return { title: users[id] ?? "Unknown user" };
}

export default async function User({ params }) {
  const { id } = await params;
  const name = users[id];
  if (!name) notFound();
  return (
    <article>
      <h1>{name}</h1>
      <p>user #{id}</p>
    </article>
  );
}
