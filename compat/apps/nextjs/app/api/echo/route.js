import { NextResponse } from "next/server";

export async function POST(request) {
  let body;
  try {
    body = await request.json();
  } catch {
    return NextResponse.json({ error: "invalid JSON" }, { status: 400 });
  }
  const response = NextResponse.json({ got: body, method: request.method }, { status: 201 });
  response.cookies.set("seen", "yes", { path: "/", httpOnly: true });
  return response;
}
