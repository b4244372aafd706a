export default async function globalSetup(): Promise<void> {}
