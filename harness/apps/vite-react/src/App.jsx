import { useState } from "react";

export default function App() {
  const [count, setCount] = useState(0);
  return (
    <main>
      <h1>Vite React counter</h1>
      <button type="button" onClick={() => setCount((n) => n + 1)}>
        Increment
      </button>
      <p role="status">Count is {count}</p>
    </main>
  );
}
