//! The flusher: claim a batch of due records, publish each to its unsettled targets,
//! record the evidence and release with the next due time.
