// A tiny app for `dshkit verify`: add tasks, see the count change.
const form = document.getElementById("add");
const input = document.getElementById("task");
const list = document.getElementById("tasks");
const count = document.getElementById("count");

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  const item = document.createElement("li");
  item.textContent = text;
  list.append(item);
  input.value = "";
  const n = list.children.length;
  count.textContent = n === 1 ? "1 task" : `${n} tasks`;
});
