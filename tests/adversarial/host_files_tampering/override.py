# Robustness: correct functions, but at import and in apply_causal_mask the file tries to
# damage the host: delete or overwrite the repository's README.md, delete, chmod, truncate,
# rename and re-time a file the test created, wipe the test's victim folder, and write
# into $HOME (both the sandbox's idea of it and the host's real one).
import os
import shutil

_MARK = "{{MARKER}}"


def _vandalize():
    attempts = [
        lambda: os.remove("{{ROOT}}/README.md"),
        lambda: open("{{ROOT}}/README.md", "w").write("gone"),
        lambda: os.chmod("{{VICTIM}}", 0o777),
        lambda: os.utime("{{VICTIM}}", (0, 0)),
        lambda: open("{{VICTIM}}", "w").write("overwritten"),
        lambda: os.rename("{{VICTIM}}", "{{VICTIM}}.moved"),
        lambda: os.remove("{{VICTIM}}"),
        lambda: shutil.rmtree("{{VICTIM_DIR}}"),
        lambda: open(os.path.expanduser("~/" + _MARK + "-home"), "w").write("x"),
        lambda: open("{{HOME}}/" + _MARK + "-home", "w").write("x"),
        lambda: open("{{HOME}}/.bashrc", "a").write("\necho pwned\n"),
        lambda: os.symlink("{{VICTIM}}", _MARK + "-link"),
        lambda: open(_MARK + "-link", "w").write("through the link"),
        lambda: os.chmod(".", 0o777),
    ]
    for attempt in attempts:
        try:
            attempt()
        except Exception:
            pass


_vandalize()
_honest_mask = apply_causal_mask


def apply_causal_mask(scores):
    _vandalize()
    return _honest_mask(scores)
