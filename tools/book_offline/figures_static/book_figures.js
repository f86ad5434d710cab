// The book's figures at full size: a click (or Enter) on a figure opens it at its own
// pixel size in an overlay that scrolls; a click, Escape or the close button closes it.
// Offline: no library, no network. Written for tools/book_offline (book_figures.css).
document.addEventListener("DOMContentLoaded", () => {
  const images = document.querySelectorAll("article.bd-article img");
  if (!images.length) return;
  const box = document.createElement("div");
  box.className = "book-lightbox";
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-modal", "true");
  box.hidden = true;
  const close = document.createElement("button");
  close.className = "book-lightbox-close";
  close.type = "button";
  close.textContent = "\u00d7";
  close.setAttribute("aria-label", "Close the figure");
  const big = document.createElement("img");  // in the page only while open: no <img> without src
  box.append(close);
  document.body.append(box);
  let opener = null;
  const shut = () => {
    box.hidden = true;
    big.remove();
    big.removeAttribute("src");
    document.body.classList.remove("book-lightbox-open");
    if (opener) opener.focus();
  };
  const open = (img) => {
    opener = img;
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    box.append(big);
    box.hidden = false;
    document.body.classList.add("book-lightbox-open");
    close.focus();
  };
  box.addEventListener("click", shut);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !box.hidden) shut(); });
  images.forEach((img) => {
    if (img.closest("a")) return;  // a linked image keeps its link
    img.classList.add("book-zoomable");
    img.tabIndex = 0;
    img.title = "Click to open at full size";
    img.addEventListener("click", () => open(img));
    img.addEventListener("keydown", (e) => { if (e.key === "Enter") open(img); });
  });
  if (location.hash === "#lightbox-check") open(images[0]);  // for a screenshot of the full size
});
