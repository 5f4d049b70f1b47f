import { describe, expect, it } from 'vitest';
import { minimizeNelderMead } from './nelder-mead';

describe('minimizeNelderMead', () => {
  it('finds the minimum of the Rosenbrock valley', () => {
    const rosenbrock = ([x, y]: number[]) => 100 * (y! - x! * x!) ** 2 + (1 - x!) ** 2;
    const r = minimizeNelderMead(rosenbrock, [-1.2, 1]);
    expect(r.converged).toBe(true);
    expect(r.x[0]).toBeCloseTo(1, 5);
    expect(r.x[1]).toBeCloseTo(1, 5);
  });

  it('finds the centre of an ill-conditioned 4-d quadratic', () => {
    const centre = [3, -2, 0.5, 10];
    const scales = [1, 10, 100, 0.1];
    const f = (x: number[]) => x.reduce((s, v, i) => s + scales[i]! * (v - centre[i]!) ** 2, 0);
    const r = minimizeNelderMead(f, [0, 0, 0, 0], { xTolerance: 1e-10, fTolerance: 1e-14 });
    expect(r.converged).toBe(true);
    r.x.forEach((v, i) => {
      expect(v).toBeCloseTo(centre[i]!, 5);
    });
  });

  it('treats non-finite values as +∞ and stays in the finite region', () => {
    const f = ([x]: number[]) => (x! <= 0 ? Number.NaN : x! - Math.log(x!));
    const r = minimizeNelderMead(f, [3]);
    expect(r.x[0]).toBeCloseTo(1, 5);
  });

  it('stops at maxIterations and says it did not converge', () => {
    const rosenbrock = ([x, y]: number[]) => 100 * (y! - x! * x!) ** 2 + (1 - x!) ** 2;
    const r = minimizeNelderMead(rosenbrock, [-1.2, 1], { maxIterations: 5 });
    expect(r.converged).toBe(false);
    expect(r.iterations).toBe(5);
  });
});
