import Guestbook from "./guestbook";

export default function Page() {
  return (
    <main>
      <h1>Next.js guestbook</h1>
      <Guestbook />
    </main>
  );
}
