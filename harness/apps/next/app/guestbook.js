"use client";

import { useState } from "react";

export default function Guestbook() {
  const [names, setNames] = useState([]);
  const [name, setName] = useState("");
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        if (name.trim()) setNames([...names, name.trim()]);
        setName("");
      }}
    >
      <label htmlFor="name">Your name</label>
      <input id="name" value={name} onChange={(event) => setName(event.target.value)} />
      <button type="submit">Sign</button>
      <ul>
        {names.map((n) => (
          <li key={n}>{n}</li>
        ))}
      </ul>
    </form>
  );
}
