"""The rooftop command line: `rooftop = "rooftop.cli:main"`.

  main       the top parser (every command's parser added from its
             family's module), signal handling, main()
  common     the flags that set config keys, the config and campaign flag
             groups, argument types
  campaign   collect, validate, runs, doctor
  model      model, compare
  report     report, plot, export
  learn      learn, predict, tune
  audit      audit
  bursts     bursts
  interfere  interfere
  tools      probe, config, engine
  plan       plan
  service    service (and its --import)
  size       size
  history    history, check
  cluster    cluster up, reshape, status, down
  nics       nics

Nothing below rooftop.cli imports it: what a study shares with its command
(config overrides, the environment record, locks) is rooftop.session.
"""

from rooftop.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
