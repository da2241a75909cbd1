(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("study-data").textContent);
  var items = Array.prototype.slice.call(document.querySelectorAll("[data-item-id]"));
  var unlock = document.getElementById("unlock-phase2");
  var phase2 = document.getElementById("phase2");

  function answerOf(el) {
    var id = el.getAttribute("data-item-id");
    var checked = el.querySelector('input[type="radio"]:checked');
    if (checked && checked.name === id) { return checked.value; }
    var box = el.querySelector("textarea");
    if (box && box.name === id && box.value.trim() !== "") { return box.value.trim(); }
    return null;
  }
  function phaseOf(el) { return el.getAttribute("data-phase") === "2" ? 2 : 1; }

  function update() {
    var done = 0, phase1Done = true;
    items.forEach(function (el) {
      var a = answerOf(el);
      if (a !== null) { done += 1; } else if (phaseOf(el) === 1) { phase1Done = false; }
    });
    document.getElementById("progress").textContent = done + " of " + items.length + " answered";
    if (unlock && phase2.hidden) { unlock.disabled = !phase1Done; }
  }

  document.addEventListener("change", update);
  document.addEventListener("input", update);

  if (unlock) {
    unlock.addEventListener("click", function () {
      items.forEach(function (el) {
        if (phaseOf(el) !== 1) { return; }
        el.querySelectorAll("input, textarea").forEach(function (i) { i.disabled = true; });
        el.classList.add("locked");
      });
      unlock.disabled = true;
      phase2.hidden = false;
      update();
    });
  }

  document.getElementById("download").addEventListener("click", function () {
    var message = document.getElementById("message");
    var annotator = document.getElementById("annotator").value.trim();
    if (annotator === "") {
      message.textContent = "Enter your annotator id first.";
      return;
    }
    var answers = {}, missing = 0;
    items.forEach(function (el) {
      var a = answerOf(el);
      if (a === null) { missing += 1; } else { answers[el.getAttribute("data-item-id")] = a; }
    });
    var body = JSON.stringify({annotator: annotator, study: data.study, answers: answers}, null, 1);
    var link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([body], {type: "application/json"}));
    link.download = "answers-" + data.study + "-" + annotator.replace(/[^A-Za-z0-9_.-]+/g, "_") + ".json";
    document.body.appendChild(link);
    link.click();
    link.remove();
    message.textContent = missing ? ("Saved; " + missing + " question(s) left unanswered.") : "Saved.";
  });
  update();
}());
