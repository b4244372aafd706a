// Integration and e2e tests wait on real services; Jest 29 has no per-project testTimeout.
jest.setTimeout(180_000);
