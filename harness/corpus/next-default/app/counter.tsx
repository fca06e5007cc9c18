"use client";

import { useState } from "react";

// Added to the generated app: a client component, so a click proves hydration.
export default function Counter() {
  const [count, setCount] = useState(0);
  return (
    <button
      type="button"
      className="rounded-full border border-solid px-5 h-12"
      onClick={() => setCount((n) => n + 1)}
    >
      Count is {count}
    </button>
  );
}
