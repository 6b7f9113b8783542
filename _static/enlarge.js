// A figure a reader can open at its full drawn size: a click on any figure of a page shows it
// over the page at its natural width (scrolling sideways on a phone, where the page shows it
// shrunk to the screen); a second click, or Escape, closes it.
document.addEventListener("DOMContentLoaded", () => {
  const overlay = document.createElement("div");
  overlay.className = "figure-enlarged";
  overlay.setAttribute("role", "dialog");
  overlay.addEventListener("click", () => overlay.classList.remove("open"));
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") overlay.classList.remove("open"); });
  document.body.appendChild(overlay);
  document.querySelectorAll("article.bd-article img").forEach((img) => {
    if (img.closest("a")) return;  // (a linked image keeps its link)
    img.classList.add("enlargeable");
    img.title = "Click to enlarge";
    img.addEventListener("click", () => {
      overlay.replaceChildren(Object.assign(document.createElement("img"), {src: img.src, alt: img.alt}));
      overlay.classList.add("open");
    });
  });
});
