"""Pixels: encode/decode with PyAV, frame sampling by presentation time, drawing helpers."""
