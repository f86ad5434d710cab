# The repository's Jupyter configuration. `make lab` and tests/test_lab.py start the server
# with JUPYTER_CONFIG_PATH=.jupyter (config: this file, labconfig/) and JUPYTER_PATH=.jupyter
# (data: kernels/); both add to the user's ~/.jupyter and take precedence.
#
# Teachers open a chapter (book/*.md) in JupyterLab as a notebook; the .md stays the source
# and saving a chapter that was not edited, also after running it, must leave it
# byte-identical (no noise in git):
#
# * the contents manager is Jupytext's (book/*.md open as notebooks, saving writes the .md
#   back and the paired _notebooks/*.ipynb of jupytext.toml, git-ignored), with one change:
#   a saved kernelspec has its keys sorted, as the chapters have them; JupyterLab rewrites it
#   as {name, display_name, language} when a kernel starts;
# * kernels/python3: the chapters' kernel under the display name their front matter has
#   ("Python 3"); JupyterLab copies the running kernel's display name into the kernelspec,
#   and ipykernel's own spec says "Python 3 (ipykernel)". Its "python" is the server's Python;
# * labconfig/default_setting_overrides.json: a double click opens a .md with the
#   "Jupytext Notebook" viewer instead of the text editor (Open With > Editor still works).
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class


class BookContentsManager(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):
    """Jupytext's contents manager; a notebook's kernelspec is saved with its keys sorted."""

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            meta = model["content"].get("metadata", {})
            if isinstance(meta.get("kernelspec"), dict):
                meta["kernelspec"] = dict(sorted(meta["kernelspec"].items()))
        return await super().save(model, path)


c = get_config()  # noqa: F821
c.ServerApp.contents_manager_class = BookContentsManager
# Jupytext's server extension (enabled by its install too) sees the class above is Jupytext's.
c.ServerApp.jpserver_extensions = {"jupyterlab_jupytext": True}
