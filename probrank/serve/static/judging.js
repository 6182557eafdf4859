// What both judging pages share (judge.js: pairs of answers; pool_judge.js: graded documents):
// plain key presses, "u" for undo, and sending one judgement with a client-generated id (the
// same on every retry, so a double press or a retried request is stored once), showing the
// next item only after the server has acknowledged the committed judgement.
(function () {
  "use strict";
  function plain(event) {
    var tag = event.target && event.target.tagName;
    return !(event.altKey || event.ctrlKey || event.metaKey || event.repeat) &&
      tag !== "INPUT" && tag !== "TEXTAREA" && tag !== "SELECT";
  }
  function wait(ms) { return new Promise(function (done) { setTimeout(done, ms); }); }

  // "u": take back the last judgement (an undo event; the page reloads)
  function bindUndo() {
    var undo = document.getElementById("undo-form");
    if (!undo) { return; }
    document.addEventListener("keydown", function (event) {
      if (plain(event) && (event.key === "u" || event.key === "U")) {
        event.preventDefault();
        undo.requestSubmit();
      }
    });
  }

  // A send(value) for #judge-form that posts `field=value`; null without the form.
  // words: the status lines for the page's kind of judgement ({refused, unreachable}) and the
  // value a submit without a button sends ({fallback}; none when null).
  function judgeForm(field, words) {
    var form = document.getElementById("judge-form");
    if (!form) { return null; }
    var jid = form.querySelector("input[name=jid]");
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      jid.value = window.crypto.randomUUID();
    }
    var status = document.getElementById("status");
    var buttons = form.querySelectorAll("button");
    var busy = false;

    function setBusy(value) {
      busy = value;
      for (var i = 0; i < buttons.length; i++) { buttons[i].disabled = value; }
    }

    async function send(value) {
      if (busy) { return; }
      setBusy(true);
      status.textContent = "Saving…";
      var body = new URLSearchParams(new FormData(form));
      body.set(field, value);
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
        status.textContent = (data && data.error) ? data.error : words.refused;
        if (response.status === 409) {  // out of date: show the current item
          status.textContent += " Reloading…";
          await wait(1200);
          window.location.reload();
          return;
        }
        setBusy(false);
        return;
      }
      status.textContent = words.unreachable;
      setBusy(false);
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var submitter = event.submitter;
      var value = submitter && submitter.value ? submitter.value : words.fallback;
      if (value) { send(value); }
    });
    return { send: send, buttons: buttons };
  }

  window.probrankJudging = { plain: plain, bindUndo: bindUndo, judgeForm: judgeForm };
})();
