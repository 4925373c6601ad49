# The book's Jupyter configuration, copied by `make install` into .venv/etc/jupyter/ as
# jupyter_server_config.py (read by JupyterLab) and jupyter_notebook_config.py (read by
# `jupyter trust`).
#
# Notebook trust: `make lab` signs the book's chapters so JupyterLab shows their saved widget
# views on open. Jupyter keeps those signatures (and the secret key that makes them) in its data
# directory, by default in your home (~/.local/share/jupyter). Keep them inside .venv instead:
# nothing is written into your home, and `make clean` removes them with the rest of the set-up.
import os
import sys

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file
# (db_file and secret_file, not data_dir: `jupyter trust` passes its own data_dir to the notary.)
data = os.path.join(sys.prefix, "share", "jupyter")
c.NotebookNotary.db_file = os.path.join(data, "nbsignatures.db")
c.NotebookNotary.secret_file = os.path.join(data, "notebook_secret")
