import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { Link, createBrowserRouter, useParams } from "react-router";
import { RouterProvider } from "react-router/dom";

function Home() {
  return (
    <main>
      <h1>Home</h1>
      <Link to="/users/7">user 7</Link>
    </main>
  );
}

function User() {
  const { id } = useParams();
  const [user, setUser] = useState(null);
  useEffect(() => {
    fetch(`/api/users/${id}`).then((r) => r.json()).then(setUser);
  }, [id]);
  return <h1>{user ? user.name : "loading"}</h1>;
}

const router = createBrowserRouter([
  { path: "/", element: <Home /> },
  { path: "/users/:id", element: <User /> },
  { path: "*", element: <h1>Not found</h1> },
]);

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <RouterProvider router={router} />
  </StrictMode>,
);
