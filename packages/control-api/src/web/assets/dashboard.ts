// The dashboard's one script, and nothing it needs: copy buttons (the resume command). Every page works without it.
for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
  button.addEventListener('click', () => {
    const field = document.getElementById(button.dataset.copy ?? '');
    if (!(field instanceof HTMLInputElement)) return;
    field.select();
    const done = () => {
      button.textContent = 'Copied';
      setTimeout(() => (button.textContent = 'Copy'), 2000);
    };
    navigator.clipboard?.writeText(field.value).then(done, () => document.execCommand('copy') && done());
  });
}
