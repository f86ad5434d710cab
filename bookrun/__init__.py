"""bookrun: the machinery that runs and renders the book, on top of :mod:`gelib`.

The library (:mod:`gelib`) computes; this package runs the chapters that call
it and builds the book from them, and is never imported by the library:

* :mod:`bookrun.scales`: the three scales a chapter runs at (``ci``,
  ``default``, ``paper``) and the choice of its sizes;
* :mod:`bookrun.glue`: numbers glued for the chapters' prose, many in one call;
* :mod:`bookrun.explore`: the chapters' slider explorers;
* :mod:`bookrun.reference_times`: measured batch runs, the basis of the estimates;
* :mod:`bookrun.batch`: the batch (chapters executed by Papermill), its run
  folders, records, estimates and the rendering;
* :mod:`bookrun.cli`: the command line, ``python -m gelib
  {compare,law,report,presets,batch,render}``, on top of both.
"""
