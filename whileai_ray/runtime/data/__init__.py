"""Ray Data over a result's Parquet files: grading on the cluster and ``to_ray_dataset()``.
"""
