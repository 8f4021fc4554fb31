// The sign-in link page: the link's secret travels in the URL's fragment (never sent to a server, never in a log or a
// Referer), so this script moves it into the form and out of the address bar. The person sends the form: a link
// someone else sent must not sign this browser in to their account unasked.
const field = document.querySelector<HTMLInputElement>('input[name="token"]');
const form = field?.form;
const secret = decodeURIComponent(location.hash.replace(/^#/, ''));
if (
  field !== null &&
  field !== undefined &&
  form !== null &&
  form !== undefined &&
  /^[A-Za-z0-9_-]{20,100}$/.test(secret)
) {
  field.value = secret;
  history.replaceState(null, '', location.pathname + location.search);
  form.querySelector<HTMLButtonElement>('button[type="submit"]')?.focus();
}
