"""The few ``scipy.special`` functions the tail audit calls, without running ``scipy.special``'s package.

They are the package's own ufuncs (``scipy.special._ufuncs``: the objects ``scipy.special`` exports
under the same names) and its scalar C functions (``scipy.special.cython_special``), imported through
:func:`ctwm_cli.runtime.deferred.submodule`, so an audit's start skips the package's array-API layer (~0.15 s
and 20 MiB, issue 29). Anything else that imports ``scipy.special`` later gets the whole package, the
same module objects.
"""

from __future__ import annotations

from ..runtime.deferred import submodule

_ufuncs = submodule("scipy.special._ufuncs")
cython_special = submodule("scipy.special.cython_special")

chdtrc = _ufuncs.chdtrc
exp1 = _ufuncs.exp1
gammaincc = _ufuncs.gammaincc
gammainccinv = _ufuncs.gammainccinv
kolmogi = _ufuncs.kolmogi
log_ndtr = _ufuncs.log_ndtr
ndtr = _ufuncs.ndtr
ndtri = _ufuncs.ndtri

__all__ = ["chdtrc", "cython_special", "exp1", "gammaincc", "gammainccinv", "kolmogi", "log_ndtr", "ndtr",
           "ndtri"]
