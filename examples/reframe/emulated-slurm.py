# ReFrame site configuration: the emulated cluster's Slurm
# ('rooftop cluster up --slurm', then export the SLURM_CONF it prints).
# ReFrame submits the check with sbatch (polling with squeue: this Slurm has
# no accounting database for sacct); rooftop starts its engines with srun
# inside the job's allocation.
#   reframe -C examples/reframe/emulated-slurm.py -c "$(rooftop-reframe-check)" -r -S num_nodes=3
site_configuration = {
    "systems": [{
        "name": "rooftop-emulated",
        "descr": "rooftop's emulated cluster with Slurm",
        "hostnames": [".*"],
        "partitions": [{"name": "nodes", "scheduler": "squeue", "launcher": "srun",
                        "environs": ["builtin"], "max_jobs": 1,
                        "time_limit": "10m"}],
    }],
}
