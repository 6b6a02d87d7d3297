//! The askbus question tool for LLMs (work in progress).
