"""What the tests build on: synthetic sweep inputs with ground truth (generator), kafka-dump-log.sh text
(dump_log_render), the project built and installed as a user installs it (installed)."""
