export function compileRunner(entry: string, outfile: string): Promise<string>;
