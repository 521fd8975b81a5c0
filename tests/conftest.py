"""Test-wide settings: offline Hugging Face, headless plots, quiet progress bars."""
import os

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATTNFLOW_QUIET", "1")
