// A package of the workspace that the web app imports through pnpm's link.
export function greeting() {
  return 'Greeting from a workspace package'
}
