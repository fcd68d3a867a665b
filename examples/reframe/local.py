# ReFrame site configuration: this machine, no scheduler. rooftop splits it
# into logical nodes (its local launcher).
#   reframe -C examples/reframe/local.py -c "$(rooftop-reframe-check)" -r
site_configuration = {
    "systems": [{
        "name": "rooftop-local",
        "descr": "one machine, split into logical nodes by rooftop",
        "hostnames": [".*"],
        "partitions": [{"name": "local", "scheduler": "local", "launcher": "local",
                        "environs": ["builtin"], "max_jobs": 1}],
    }],
}
