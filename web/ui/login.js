// The sign-in form keeps the tab's fragment (#console, say), which never
// reaches the server: it posts to login#<fragment>, and a browser keeps a
// request's fragment across a redirect without one, as the server's to the
// page itself, so the page opens where it was asked to. Only the fragment
// is added: the form still posts to login, on this origin.

const form = document.querySelector("form");

function keepFragment() {
  const url = new URL("login", location.href);
  url.hash = location.hash;
  form.action = url.href;
}

keepFragment();
window.addEventListener("hashchange", keepFragment);
