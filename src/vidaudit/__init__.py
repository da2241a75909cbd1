"""vidaudit: audit video-language models against executable ground truth."""

__version__ = "0.1.0"
