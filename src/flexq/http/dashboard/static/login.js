// `flexq dashboard` opens /dashboard/login#token=...: the fragment never reaches the server; post it once.
document.addEventListener("DOMContentLoaded", function () {
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!m) { return; }
  history.replaceState(null, "", window.location.pathname);
  document.getElementById("token").value = decodeURIComponent(m[1]);
  document.getElementById("login").submit();
});
