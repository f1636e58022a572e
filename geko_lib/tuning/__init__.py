"""Tune mode: parameter spaces, tuning-config generation and the genetic-algorithm tuner."""
