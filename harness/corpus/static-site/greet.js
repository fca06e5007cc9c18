document.getElementById("greet").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = document.getElementById("name").value.trim() || "stranger";
  document.getElementById("greeting").textContent = `Hello, ${name}!`;
});
