import { Links, Meta, Outlet, Scripts, isRouteErrorResponse } from "react-router";
export function Layout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <head><meta charSet="utf-8" /><Meta /><Links /></head>
      <body>{children}<Scripts /></body>
    </html>
  );
}
export default function App() { return <Outlet />; }
export function ErrorBoundary({ error }: { error: unknown }) {
  return <main><h1>{isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : "Error"}</h1></main>;
}
