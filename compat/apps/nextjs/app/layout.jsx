export const metadata = { title: { default: "Isolane on Next.js", template: "%s | Isolane" } };

export default function RootLayout({ children }) {
  return (
    <html lang="en">
      <body>
        <nav>compat</nav>
        {children}
      </body>
    </html>
  );
}
