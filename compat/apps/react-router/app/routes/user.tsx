import { Form, data, useActionData, useLoaderData } from "react-router";
export async function loader({ params }: { params: { id: string } }) {
  if (!/^\d+$/.test(params.id)) throw data("no such user", { status: 404 });
  return { id: Number(params.id) };
}
export async function action({ request }: { request: Request }) {
  const form = await request.formData();
  return { saved: String(form.get("nickname") ?? "").toUpperCase() };
}
export default function User() {
  const { id } = useLoaderData<typeof loader>();
  const saved = useActionData<typeof action>();
  return <main><h1>User {id}</h1>{saved ? <p>saved {saved.saved}</p> : null}<Form method="post"><input name="nickname" /></Form></main>;
}
