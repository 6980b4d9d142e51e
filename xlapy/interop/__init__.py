"""Interoperation with other frameworks: ``torch.compile(model, backend="xlapy")``
(``xlapy.interop.torch_backend``). Importing this package imports no framework; each
module imports its framework when it is used."""
