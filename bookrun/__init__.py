"""bookrun: the machinery that runs and renders the book, on top of :mod:`gelib`.

The library (:mod:`gelib`) computes; this package runs the chapters that call
it and builds the book from them, and is never imported by the library:

* :mod:`bookrun.scales`: the three scales a chapter runs at (``ci``,
  ``default``, ``paper``) and the choice of its sizes;
* :mod:`bookrun.glue`: numbers glued for the chapters' prose, many in one call;
* :mod:`bookrun.explore`: the chapters' slider explorers;
* :mod:`bookrun.reference_times`: measured batch runs, the basis of the estimates;
* :mod:`bookrun.outputs`: a file a command writes, checked before the work
  and written atomically;
* :mod:`bookrun.chapters`: the book's chapters, their parameters and overrides;
* :mod:`bookrun.runfolder`: run folders and their manifest of what the runs
  wrote (the only files ``--force`` removes), their locks and safety checks;
* :mod:`bookrun.execute`: one chapter executed by Papermill, in a worker
  process of its own;
* :mod:`bookrun.estimate`: the expected time of a run, from measurements;
* :mod:`bookrun.render`: the mirror tree and Jupyter Book;
* :mod:`bookrun.batch`: the batch, which ties them together: the run, its
  record, its workers, interruption and resumption;
* :mod:`bookrun.cli`: the command line, ``python -m gelib
  {compare,law,report,presets,batch,render}``, on top of both.
"""
