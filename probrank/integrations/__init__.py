"""Adapters to other toolkits; each is an optional extra, imported only on use.

* :mod:`probrank.integrations.pyterrier` (``pip install 'probrank[pyterrier]'``): probrank's
  BM25, rerankers and QLFusion as PyTerrier transformers.
"""
