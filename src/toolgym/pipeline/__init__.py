"""`toolgym pipeline CONFIG`: build tasks → validate → teacher → SFT → RFT → GRPO → eval → report, in one run folder."""
