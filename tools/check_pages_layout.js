// The layout measurements of tools/check_pages.py (its `layout` check), run inside a page.
//
// check_pages.py loads a temporary copy of each page with this script appended, at the window
// width it checks (1280 px by default). Once the page (its images included) has loaded and MathJax
// has typeset, the script measures what a reader sees and writes it, as JSON, into a
// JSON script element (id "check-pages-layout") at the end of <body>, which the dumped DOM carries
// back:
//
//   code     with every fold as the page opens (closed), the summed height of the code cells'
//            visible inputs (div.cell_input) and the height of the article (article.bd-article,
//            else <main>, else <body>);
//   then every fold is opened (<details>, sphinx-togglebutton's hidden blocks), since a reader
//   who opens a proof must be able to read its formulas and figures, and
//   formulas for each displayed formula (mjx-container[display="true"]): its TeX (from MathJax's
//            own record of it), the width of its typeset box (mjx-math, with the equation label
//            where MathJax sets one) and the width of the column it sits in (the clientWidth of
//            the block around it: div.math, else the container's parent);
//   images   for each shown <img>: its src and its displayed width in CSS px.
(function () {
  "use strict";
  var ID = "check-pages-layout";

  function width(el) {
    return el ? el.getBoundingClientRect().width : 0;
  }

  function shown(el) {
    // a closed <details> keeps its content laid out (content-visibility: hidden): not shown
    if (el.closest("details:not([open])") && !el.closest("details:not([open]) > summary")) return false;
    if (el.checkVisibility && !el.checkVisibility()) return false;
    return el.getClientRects().length > 0 && el.getBoundingClientRect().height > 0;
  }

  function tex(container) {
    try {
      var items = window.MathJax.startup.document.getMathItemsWithin(container);
      if (items && items.length) return String(items[0].math);
    } catch (e) {
      /* not MathJax 3, or no record: the text below */
    }
    return (container.getAttribute("aria-label") || container.textContent || "").slice(0, 200);
  }

  function measureCode() {
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    var code = 0;
    document.querySelectorAll("div.cell_input").forEach(function (el) {
      if (shown(el)) code += el.getBoundingClientRect().height;
    });
    return { code_px: code, article_px: article.getBoundingClientRect().height };
  }

  function openFolds() {
    document.querySelectorAll("details").forEach(function (d) {
      d.open = true;
    });
    document.querySelectorAll(".toggle-hidden").forEach(function (el) {
      el.classList.remove("toggle-hidden");
    });
    document.querySelectorAll(".toggle-details__container, .toggle-content").forEach(function (el) {
      el.style.display = "";
    });
  }

  function measureFormulas() {
    var out = [];
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (c) {
      if (!shown(c)) return;
      var box = c.closest("div.math") || c.parentElement;
      var math = c.querySelector("mjx-math");
      var content = math ? width(math) : c.scrollWidth;
      var label = c.querySelector("mjx-labels");
      if (label && math) {
        // a tagged equation: the label sits beside the formula in the same column
        content += width(label);
      }
      // and whatever the container itself must scroll (its content wider than its box)
      out.push({ tex: tex(c), width: content, column: box.clientWidth, scrolls: c.scrollWidth > c.clientWidth + 1 });
    });
    return out;
  }

  function measureImages() {
    var out = [];
    document.querySelectorAll("img").forEach(function (img) {
      if (!shown(img)) return;
      out.push({ src: img.getAttribute("src") || "", width: width(img), natural: img.naturalWidth });
    });
    return out;
  }

  function write(result) {
    var el = document.createElement("script");
    el.type = "application/json";
    el.id = ID;
    el.textContent = JSON.stringify(result).replace(/</g, "\\u003c");
    document.body.appendChild(el);
  }

  function run() {
    var mj = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    // the load event has waited for the images; MathJax typesets after it
    Promise.resolve(mj)
      .then(function () {
        var result = { viewport: window.innerWidth };
        var code = measureCode();
        result.code_px = code.code_px;
        result.article_px = code.article_px;
        openFolds();
        // reading a box's size lays out the opened folds first (no animation frame is waited for:
        // a headless browser on virtual time may never draw one)
        result.formulas = measureFormulas();
        result.images = measureImages();
        return result;
      })
      .then(write, function (err) {
        write({ error: String(err) });
      });
  }

  if (document.readyState === "complete") run();
  else window.addEventListener("load", run);
})();
