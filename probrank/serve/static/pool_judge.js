// The pool judging page: keys 0, 1, 2 grade the document, u takes back the last judgement; a
// client-generated judgement id (the same on every retry, so a double press or a retried
// request is stored once); the next document is shown only after the server has acknowledged
// the committed judgement.
(function () {
  "use strict";
  function typing(event) {
    var tag = event.target && event.target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
  }
  function plain(event) {
    return !(event.altKey || event.ctrlKey || event.metaKey || event.repeat) && !typing(event);
  }
  var undo = document.getElementById("undo-form");
  if (undo) {
    document.addEventListener("keydown", function (event) {
      if (plain(event) && (event.key === "u" || event.key === "U")) {
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
  var grades = {};
  for (var i = 0; i < buttons.length; i++) { grades[buttons[i].value] = true; }
  var busy = false;

  function setBusy(value) {
    busy = value;
    for (var i = 0; i < buttons.length; i++) { buttons[i].disabled = value; }
  }

  function wait(ms) { return new Promise(function (done) { setTimeout(done, ms); }); }

  async function send(grade) {
    if (busy) { return; }
    setBusy(true);
    status.textContent = "Saving…";
    var body = new URLSearchParams(new FormData(form));
    body.set("grade", grade);
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
      status.textContent = (data && data.error) ? data.error : "The server refused the judgement.";
      if (response.status === 409) {  // judged by someone else meanwhile: show the next one
        status.textContent += " Reloading…";
        await wait(1200);
        window.location.reload();
        return;
      }
      setBusy(false);
      return;
    }
    status.textContent = "The server cannot be reached; your judgement was not saved. Press again.";
    setBusy(false);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var submitter = event.submitter;
    if (submitter && submitter.value) { send(submitter.value); }
  });
  document.addEventListener("keydown", function (event) {
    if (plain(event) && grades[event.key]) {
      event.preventDefault();
      send(event.key);
    }
  });
})();
