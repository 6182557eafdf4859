// The judging page: keyboard shortcuts (u: undo), one answer at a time, a client-generated
// judgement id (the same id on every retry, so a double press or a retried request is stored
// once), and the next pair shown only after the server has acknowledged the committed judgement.
(function () {
  "use strict";
  var undo = document.getElementById("undo-form");
  if (undo) {  // "u": take back the last answer (an undo event; the page reloads)
    document.addEventListener("keydown", function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) { return; }
      var tag = event.target && event.target.tagName;
      if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
      if (event.key === "u" || event.key === "U") {
        event.preventDefault();
        undo.requestSubmit();
      }
    });
  }
  var form = document.getElementById("judge-form");
  if (!form) { return; }
  var jid = form.querySelector("input[name=jid]");
  if (window.crypto && typeof window.crypto.randomUUID === "function") {
    jid.value = window.crypto.randomUUID();
  }
  var status = document.getElementById("status");
  var buttons = form.querySelectorAll("button");
  var busy = false;
  var KEYS = { ArrowLeft: "left", "1": "left", ArrowRight: "right", "2": "right",
               ArrowDown: "tie", "0": "tie" };

  function setBusy(value) {
    busy = value;
    for (var i = 0; i < buttons.length; i++) { buttons[i].disabled = value; }
  }

  function wait(ms) { return new Promise(function (done) { setTimeout(done, ms); }); }

  async function send(choice) {
    if (busy) { return; }
    setBusy(true);
    status.textContent = "Saving…";
    var body = new URLSearchParams(new FormData(form));
    body.set("choice", choice);
    for (var attempt = 0; attempt < 6; attempt++) {
      var response;
      try {
        response = await fetch(form.action, {
          method: "POST",
          headers: { "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded" },
          body: body.toString(),
          credentials: "same-origin",
          cache: "no-store"
        });
      } catch (error) {
        status.textContent = "No answer from the server; trying again…";
        await wait(400 * (attempt + 1));
        continue;
      }
      var data = null;
      try { data = await response.json(); } catch (error) { data = null; }
      if (response.ok && data && data.next_url) {
        status.textContent = "Saved.";
        window.location.replace(data.next_url);
        return;
      }
      status.textContent = (data && data.error) ? data.error : "The server refused the answer.";
      if (response.status === 409) {  // out of date: show the current pair
        status.textContent += " Reloading…";
        await wait(1200);
        window.location.reload();
        return;
      }
      setBusy(false);
      return;
    }
    status.textContent = "The server cannot be reached; your answer was not saved. Press again.";
    setBusy(false);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var submitter = event.submitter;
    send(submitter && submitter.value ? submitter.value : "tie");
  });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) { return; }
    var tag = event.target && event.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") { return; }
    var choice = KEYS[event.key];
    if (choice) {
      event.preventDefault();
      send(choice);
    }
  });
})();
