"""What a plugin author needs, shipped in the wheel: `medprobe plugin init NAME` writes a working plugin
distribution (`skeleton`, from the templates in skeleton/), `medprobe plugin check DIST` runs the
conformance rules (`conformance`, the same as medprobe's own tests run on its built-ins) on an installed
distribution's entries (`check`), on tiny random models (`tiny`). docs/plugins.md is the contract.
"""
