"""webxnn: WebNN graphs to compact XNNGraph (.xnn) blobs, and a fast CPU runtime for them."""
__version__ = "0.1.0"
