"""The lab: sweeps that test the prefill-and-decode chapter's claims on this machine, without Qt."""
